"""The verbalizer: what an assistant in Home Assistant writes → what a speaker of the language says.

The tables hold sentences an LLM conversation agent answers with (weather, prices, times, dates,
percentages, units, phone numbers, abbreviations, domains), each with the sentence as a native
speaker reads it aloud. Then: every pattern takes linear time on adversarial input, unknown
languages fall back, and the verbalizer leaves its own output as it is.
"""

import pytest

from wyoming_multitts.text.languages import LANGUAGES, language
from wyoming_multitts.text.verbalize import verbalize

from .conftest import assert_linear_time

# Length of each adversarial text, in characters (a quadratic pattern takes minutes on it).
ADVERSARIAL_CHARS = 20_000

# Fragments that, repeated, would make a backtracking or rescanning pattern take quadratic time:
# separators, currency, dates, domains, e-mail, ranges, phone prefixes, fractions, units, CJK dates.
# fmt: off
ADVERSARIAL_FRAGMENTS = (
    "1,", ",000", "1.", "1:", "$1", "1.2", "a.", "@a.", "1-", "+1 ", "1/", "1 ", "0 1", "1 000 ",
    "%1", "12.12.", "1er ", "1-го ", "2026年", "Dr. ", "a@", "(555) ", "1x", "~1", "1°", "12:30 ",
    "0171 ", "a1", "1 m",
)
# fmt: on

# Input sentence → spoken sentence, per language. Where the spoken form approximates grammar the
# verbalizer cannot see, the sentence is chosen so that the form is right, and a comment says so.
# fmt: off
CASES = {
    "en": [
        (
            "It's currently 21 °C in Berlin with 65% humidity.",
            "It's currently twenty-one degrees Celsius in Berlin with sixty-five percent humidity.",
        ),
        (
            "The low tonight will be -3 °C, so wrap up warm.",
            "The low tonight will be minus three degrees Celsius, so wrap up warm.",
        ),
        (
            "Your flight leaves at 7:05 and lands at 14:30.",
            "Your flight leaves at seven oh five and lands at fourteen thirty.",
        ),
        (
            "The alarm is set for 6:30 am.",
            "The alarm is set for six thirty a m.",
        ),
        (
            "I set a timer for 10:00.",
            "I set a timer for ten o'clock.",
        ),
        (
            "The meeting is on 12/01/2026 at 3:30 pm.",
            "The meeting is on December first, twenty twenty-six at three thirty p m.",
        ),
        (
            "Your appointment is on December 1, 2026.",
            "Your appointment is on December first, twenty twenty-six.",
        ),
        (
            "The warranty ends on 2026-03-15.",
            "The warranty ends on March fifteenth, twenty twenty-six.",
        ),
        (
            "Bitcoin is at $43,250.75 today, up 2.5% since yesterday.",
            "Bitcoin is at forty-three thousand two hundred fifty dollars and seventy-five "
            "cents today, up two point five percent since yesterday.",
        ),
        (
            "That costs €20.99, or about $22.",
            "That costs twenty euros and ninety-nine cents, or about twenty-two dollars.",
        ),
        (
            "The contract is worth $1.5 million.",
            "The contract is worth one point five million dollars.",
        ),
        (
            "Call Dr. Smith at (555) 123-4567.",
            "Call Doctor Smith at five five five, one two three, four five six seven.",
        ),
        (
            "For support, email anna@example.com or visit example.com.",
            "For support, email anna at example dot com or visit example dot com.",
        ),
        (
            "The living room light is on; check light.kitchen too.",
            "The living room light is on; check light dot kitchen too.",
        ),
        (
            "The washing machine used 1.5 kWh and the heater draws 2000 W.",
            "The washing machine used one point five kilowatt-hours and the heater draws two "
            "thousand watts.",
        ),
        (
            "Wind is 15 km/h from the northwest and pressure is 1013 hPa.",
            "Wind is fifteen kilometers per hour from the northwest and pressure is one "
            "thousand thirteen hectopascals.",
        ),
        (
            "PM2.5 is at 12 µg/m³ and CO2 is at 800 ppm.",
            "PM two point five is at twelve micrograms per cubic meter and CO two is at eight "
            "hundred parts per million.",
        ),
        (
            "Firmware 1.10.2 fixes the issue with the 2nd sensor.",
            "Firmware one dot ten dot two fixes the issue with the second sensor.",
        ),
        (
            "Mr. Jones lives on Main St. near St. Louis.",
            "Mister Jones lives on Main Street near Saint Louis.",
        ),
        (
            "Your package weighs 2.5 kg, i.e. about 5.5 lb.",
            "Your package weighs two point five kilograms, that is about five point five pounds.",
        ),
        (
            "In 1984 the population was 12,000; in 2026 it's 15,500.",
            "In nineteen eighty-four the population was twelve thousand; in twenty twenty-six "
            "it's fifteen thousand five hundred.",
        ),
        (
            "It was the best album of the 1990s.",
            "It was the best album of the nineteen nineties.",
        ),
        (
            "You walked 10-20 minutes, roughly 1,500 steps.",
            "You walked ten to twenty minutes, roughly one thousand five hundred steps.",
        ),
        (
            "Add 2 cups of flour & 1 cup of sugar.",
            "Add two cups of flour and one cup of sugar.",
        ),
        (
            "The new MP3 player holds 4 GB.",
            "The new MP three player holds four gigabytes.",
        ),
    ],
    "de": [
        (
            "Im Wohnzimmer sind es 21,5 °C bei 45 % Luftfeuchtigkeit.",
            "Im Wohnzimmer sind es einundzwanzig Komma fünf Grad Celsius bei fünfundvierzig "
            "Prozent Luftfeuchtigkeit.",
        ),
        (
            "Heute Nacht sinkt die Temperatur auf -3 °C.",
            "Heute Nacht sinkt die Temperatur auf minus drei Grad Celsius.",
        ),
        (
            "Der Termin ist am 1.12. um 14:30 Uhr.",
            "Der Termin ist am ersten Dezember um vierzehn Uhr dreißig.",
        ),
        (
            "Dein Zug fährt um 7:05 und kommt um 9 Uhr an.",
            "Dein Zug fährt um sieben Uhr fünf und kommt um neun Uhr an.",
        ),
        (
            "Am 01.12.2026 ist der Müll dran.",
            "Am ersten Dezember zweitausendsechsundzwanzig ist der Müll dran.",
        ),
        (
            "Der 1. Dezember 2026 ist ein Dienstag.",
            "Der erste Dezember zweitausendsechsundzwanzig ist ein Dienstag.",
        ),
        (
            "Seit dem 3. Oktober 1990 ist Deutschland wieder vereint.",
            "Seit dem dritten Oktober neunzehnhundertneunzig ist Deutschland wieder vereint.",
        ),
        (
            "Das kostet 3,50 € pro Liter, also 12.000 Euro im Jahr.",
            "Das kostet drei Euro und fünfzig Cent pro Liter, also zwölftausend Euro im Jahr.",
        ),
        (
            "Der Strompreis liegt bei 0,32 € pro kWh, das Auto verbraucht 15 kWh auf 100 km.",
            "Der Strompreis liegt bei zweiunddreißig Cent pro kWh, das Auto verbraucht "
            "fünfzehn Kilowattstunden auf einhundert Kilometer.",
        ),
        (
            "Die Waschmaschine braucht 1 Stunde und 2 Minuten.",
            "Die Waschmaschine braucht eine Stunde und zwei Minuten.",
        ),
        (
            "Ruf mich unter 0171 2345678 oder +49 30 1234567 an.",
            "Ruf mich unter null eins sieben eins, zwei drei vier fünf sechs sieben acht oder "
            "plus vier neun, drei null, eins zwei drei vier fünf sechs sieben an.",
        ),
        (
            "Schreib an anna@example.com oder besuche example.com.",
            "Schreib an anna ät example Punkt com oder besuche example Punkt com.",
        ),
        (
            "Der Wind weht mit 25 km/h und der Luftdruck beträgt 1013 hPa.",
            "Der Wind weht mit fünfundzwanzig Kilometer pro Stunde und der Luftdruck beträgt "
            "eintausenddreizehn Hektopascal.",
        ),
        (
            "Es sind 2.5 Grad draußen, z.B. in Berlin usw.",
            "Es sind zwei Komma fünf Grad draußen, zum Beispiel in Berlin und so weiter.",
        ),
        (
            "Das Update auf Version 1.10.2 ist installiert.",
            "Das Update auf Version eins Punkt zehn Punkt zwei ist installiert.",
        ),
        (
            "Dr. Müller wohnt in der Berliner Str. 5, Nr. 12.",
            "Doktor Müller wohnt in der Berliner Straße fünf, Nummer zwölf.",
        ),
        (
            "Die Aktie ist um 2,5 % gestiegen, auf 1.234,56 USD.",
            "Die Aktie ist um zwei Komma fünf Prozent gestiegen, auf "
            "eintausendzweihundertvierunddreißig Dollar und sechsundfünfzig Cent.",
        ),
        (
            "Das Paket wiegt ca. 1,5 kg.",
            "Das Paket wiegt circa eins Komma fünf Kilogramm.",
        ),
        (
            "Die Wohnung hat 85 m² und kostet 1.500 € Miete.",
            "Die Wohnung hat fünfundachtzig Quadratmeter und kostet eintausendfünfhundert Euro "
            "Miete.",
        ),
        (
            "Im Jahr 1984 hatte die Stadt 12.000 Einwohner, heute ist es 1 Grad kälter.",
            "Im Jahr neunzehnhundertvierundachtzig hatte die Stadt zwölftausend Einwohner, "
            "heute ist es ein Grad kälter.",
        ),
        (
            "Es dauert 10-20 Minuten.",
            "Es dauert zehn bis zwanzig Minuten.",
        ),
        (
            "Der Akku ist zu 80 % geladen, das sind 1 Std. und 30 Min.",
            "Der Akku ist zu achtzig Prozent geladen, das sind eine Stunde und dreißig Minuten.",
        ),
    ],
    # Phone numbers are said digit by digit in groups; French speakers often say the pairs as
    # numbers ("zéro un, vingt-trois, ..."), which is left for later.
    "fr": [
        (
            "Il fait 21,5 °C dans le salon avec 45 % d'humidité.",
            "Il fait vingt et un virgule cinq degrés Celsius dans le salon avec quarante-cinq "
            "pour cent d'humidité.",
        ),
        (
            "Cette nuit, la température descendra à -3 °C.",
            "Cette nuit, la température descendra à moins trois degrés Celsius.",
        ),
        (
            "Votre rendez-vous est le 1er décembre 2026 à 14h30.",
            "Votre rendez-vous est le premier décembre deux mille vingt-six à quatorze heures "
            "trente.",
        ),
        (
            "Le train part à 7:05 et arrive à 9 h 15.",
            "Le train part à sept heures cinq et arrive à neuf heures quinze.",
        ),
        (
            "La collecte des déchets a lieu le 02/12/2026.",
            "La collecte des déchets a lieu le deux décembre deux mille vingt-six.",
        ),
        (
            "Le 2 décembre, M. Dupont paie 3,50 €.",
            "Le deux décembre, Monsieur Dupont paie trois euros et cinquante centimes.",
        ),
        (
            "La facture s'élève à 1 234,56 € et l'abonnement à 12 000 € par an.",
            "La facture s'élève à mille deux cent trente-quatre euros et cinquante-six "
            "centimes et l'abonnement à douze mille euros par an.",
        ),
        (
            "Le vent souffle à 25 km/h et la pression est de 1013 hPa.",
            "Le vent souffle à vingt-cinq kilomètres par heure et la pression est de mille "
            "treize hectopascals.",
        ),
        (
            "Appelez le 01 23 45 67 89 ou écrivez à anna@example.com.",
            "Appelez le zéro un, deux trois, quatre cinq, six sept, huit neuf ou écrivez à "
            "anna arobase example point com.",
        ),
        (
            "Consultez example.com pour plus d'informations.",
            "Consultez example point com pour plus d'informations.",
        ),
        (
            "La mise à jour 1.10.2 corrige le 2e capteur.",
            "La mise à jour un point dix point deux corrige le deuxième capteur.",
        ),
        (
            "C'est la 1re fois que la lampe s'allume.",
            "C'est la première fois que la lampe s'allume.",
        ),
        (
            "Il reste 1 heure et 21 minutes, etc.",
            "Il reste une heure et vingt et une minutes, et cetera.",
        ),
        (
            "La voiture consomme 15 kWh pour 100 km, soit env. 3 € de plus.",
            "La voiture consomme quinze kilowatt-heures pour cent kilomètres, soit environ "
            "trois euros de plus.",
        ),
        (
            "L'appartement fait 85 m² au 3e étage, n° 12.",
            "L'appartement fait quatre-vingt-cinq mètres carrés au troisième étage, numéro douze.",
        ),
        (
            "En 1984, la ville comptait 12 000 habitants.",
            "En mille neuf cent quatre-vingt-quatre, la ville comptait douze mille habitants.",
        ),
        (
            "Le colis pèse 2,5 kg et mesure 30 cm.",
            "Le colis pèse deux virgule cinq kilogrammes et mesure trente centimètres.",
        ),
    ],
    "es": [
        (
            "En el salón hay 21,5 °C y un 45 % de humedad.",
            "En el salón hay veintiuno coma cinco grados Celsius y un cuarenta y cinco por "
            "ciento de humedad.",
        ),
        (
            "Esta noche la temperatura bajará a -3 °C.",
            "Esta noche la temperatura bajará a menos tres grados Celsius.",
        ),
        (
            "Tu cita es el 1 de diciembre de 2026 a las 14:30.",
            "Tu cita es el uno de diciembre de dos mil veintiséis a las catorce y treinta.",
        ),
        (
            "El tren sale a las 7:05 y llega a la 1:15.",
            "El tren sale a las siete y cinco y llega a la una y quince.",
        ),
        (
            "La recogida de basura es el 02/12/2026.",
            "La recogida de basura es el dos de diciembre de dos mil veintiséis.",
        ),
        (
            "Hace 21 °C y cuesta 3,50 € el litro.",
            "Hace veintiún grados Celsius y cuesta tres euros con cincuenta céntimos el litro.",
        ),
        (
            "La factura es de 1.234,56 € y la suscripción cuesta 12.000 € al año.",
            "La factura es de mil doscientos treinta y cuatro euros con cincuenta y seis "
            "céntimos y la suscripción cuesta doce mil euros al año.",
        ),
        (
            "El viento sopla a 25 km/h y la presión es de 1013 hPa.",
            "El viento sopla a veinticinco kilómetros por hora y la presión es de mil trece "
            "hectopascales.",
        ),
        (
            "Llame al +34 912 345 678 o escriba a anna@example.com.",
            "Llame al más tres cuatro, nueve uno dos, tres cuatro cinco, seis siete ocho o "
            "escriba a anna arroba example punto com.",
        ),
        (
            "Visite example.com para más información.",
            "Visite example punto com para más información.",
        ),
        (
            "La versión 1.10.2 corrige el fallo del 2º sensor.",
            "La versión uno punto diez punto dos corrige el fallo del segundo sensor.",
        ),
        (
            "Vivo en el 1º piso y es la 1ª vez que pasa.",
            "Vivo en el primer piso y es la primera vez que pasa.",
        ),
        (
            "Faltan 1 hora y 21 minutos, etc.",
            "Faltan una hora y veintiún minutos, etcétera.",
        ),
        (
            "El Sr. García llega en aprox. 10-20 minutos.",
            "El señor García llega en aproximadamente diez a veinte minutos.",
        ),
        (
            "El paquete pesa 2,5 kg, p. ej. como un melón.",
            "El paquete pesa dos coma cinco kilogramos, por ejemplo como un melón.",
        ),
        (
            "En 1984 la ciudad tenía 12.000 habitantes.",
            "En mil novecientos ochenta y cuatro la ciudad tenía doce mil habitantes.",
        ),
    ],
    "it": [
        (
            "In soggiorno ci sono 21,5 °C e il 45 % di umidità.",
            "In soggiorno ci sono ventuno virgola cinque gradi Celsius e il quarantacinque "
            "percento di umidità.",
        ),
        (
            "Stanotte la temperatura scenderà a -3 °C.",
            "Stanotte la temperatura scenderà a meno tre gradi Celsius.",
        ),
        (
            "L'appuntamento è il 1 dicembre 2026 alle 14:30.",
            "L'appuntamento è il primo dicembre duemilaventisei alle quattordici e trenta.",
        ),
        (
            "Il treno parte alle 7:05 e arriva all'1:15.",
            "Il treno parte alle sette e cinque e arriva all'una e quindici.",
        ),
        (
            "La raccolta dei rifiuti è il 02/12/2026.",
            "La raccolta dei rifiuti è il due dicembre duemilaventisei.",
        ),
        (
            "Il 2 dicembre il Dott. Rossi paga 3,50 €.",
            "Il due dicembre il dottor Rossi paga tre euro e cinquanta centesimi.",
        ),
        (
            "La bolletta è di 1.234,56 € e l'abbonamento costa 12.000 € l'anno.",
            "La bolletta è di milleduecentotrentaquattro euro e cinquantasei centesimi e "
            "l'abbonamento costa dodicimila euro l'anno.",
        ),
        (
            "Il vento soffia a 25 km/h e la pressione è di 1013 hPa.",
            "Il vento soffia a venticinque chilometri orari e la pressione è di milletredici "
            "ettopascal.",
        ),
        (
            "Chiama il +39 06 1234 5678 o scrivi a anna@example.com.",
            "Chiama il più tre nove, zero sei, uno due tre quattro, cinque sei sette otto o "
            "scrivi a anna chiocciola example punto com.",
        ),
        (
            "Visita example.com per maggiori informazioni.",
            "Visita example punto com per maggiori informazioni.",
        ),
        (
            "L'aggiornamento 1.10.2 risolve il problema del 2º sensore.",
            "L'aggiornamento uno punto dieci punto due risolve il problema del secondo sensore.",
        ),
        (
            "Abito al 1º piano ed è la 1ª volta che succede.",
            "Abito al primo piano ed è la prima volta che succede.",
        ),
        (
            "Mancano 2 ore e 1 minuto, ecc.",
            "Mancano due ore e un minuto, eccetera.",
        ),
        (
            "Il pacco pesa 2,5 kg, ad es. come un melone.",
            "Il pacco pesa due virgola cinque chilogrammi, ad esempio come un melone.",
        ),
        (
            "Nel 1984 la città aveva 12.000 abitanti.",
            "Nel millenovecentottantaquattro la città aveva dodicimila abitanti.",
        ),
    ],
    "pt": [
        (
            "Na sala estão 21,5 °C e 45 % de umidade.",
            "Na sala estão vinte e um vírgula cinco graus Celsius e quarenta e cinco por cento "
            "de umidade.",
        ),
        (
            "Esta noite a temperatura vai cair para -3 °C.",
            "Esta noite a temperatura vai cair para menos três graus Celsius.",
        ),
        (
            "Sua consulta é em 1 de dezembro de 2026 às 14:30.",
            "Sua consulta é em primeiro de dezembro de dois mil e vinte e seis às catorze e "
            "trinta.",
        ),
        (
            "O trem sai às 7:05 e chega à 1:15.",
            "O trem sai às sete e cinco e chega à uma e quinze.",
        ),
        (
            "A coleta de lixo é em 02/12/2026.",
            "A coleta de lixo é em dois de dezembro de dois mil e vinte e seis.",
        ),
        (
            "Faz 21 °C e a gasolina custa R$ 5,89 o litro.",
            "Faz vinte e um graus Celsius e a gasolina custa cinco reais e oitenta e nove "
            "centavos o litro.",
        ),
        (
            "A fatura é de 1.234,56 € e a assinatura custa 12.000 € por ano.",
            "A fatura é de mil duzentos e trinta e quatro euros e cinquenta e seis cêntimos e "
            "a assinatura custa doze mil euros por ano.",
        ),
        (
            "O vento sopra a 25 km/h e a pressão é de 1013 hPa.",
            "O vento sopra a vinte e cinco quilômetros por hora e a pressão é de mil e treze "
            "hectopascais.",
        ),
        (
            "Ligue para +55 11 91234-5678 ou escreva para anna@example.com.",
            "Ligue para mais cinco cinco, um um, nove um dois três quatro, cinco seis sete "
            "oito ou escreva para anna arroba example ponto com.",
        ),
        (
            "Visite example.com para mais informações.",
            "Visite example ponto com para mais informações.",
        ),
        (
            "A versão 1.10.2 corrige o problema do 2º sensor.",
            "A versão um ponto dez ponto dois corrige o problema do segundo sensor.",
        ),
        (
            "Moro no 1º andar e é a 1ª vez que isso acontece.",
            "Moro no primeiro andar e é a primeira vez que isso acontece.",
        ),
        (
            "Faltam 1 hora e 22 minutos, etc.",
            "Faltam uma hora e vinte e dois minutos, etcétera.",
        ),
        (
            "O Sr. Silva chega em aprox. 10-20 minutos.",
            "O senhor Silva chega em aproximadamente dez a vinte minutos.",
        ),
        (
            "O pacote pesa 2,5 kg, p. ex. como um melão.",
            "O pacote pesa dois vírgula cinco quilogramas, por exemplo como um melão.",
        ),
        (
            "Em 1984 a cidade tinha 12.000 habitantes.",
            "Em mil novecentos e oitenta e quatro a cidade tinha doze mil habitantes.",
        ),
    ],
    # Numbers after a preposition that governs the genitive ("do -3 °C", "ok. 5 km": "do minus
    # trzech stopni", "około pięciu kilometrów") keep the nominative: the verbalizer does not
    # decline cardinals. Dates, hours after "o" and years after "w" are declined.
    "pl": [
        (
            "W salonie jest 21,5 °C i 45 % wilgotności.",
            "W salonie jest dwadzieścia jeden przecinek pięć stopnia Celsjusza i czterdzieści "
            "pięć procent wilgotności.",
        ),
        (
            "W nocy temperatura wyniesie -3 °C.",
            "W nocy temperatura wyniesie minus trzy stopnie Celsjusza.",
        ),
        (
            "Wizyta jest 1 grudnia 2026 r. o 14:30.",
            "Wizyta jest pierwszego grudnia dwa tysiące dwudziestego szóstego roku o "
            "czternastej trzydzieści.",
        ),
        (
            "Pociąg odjeżdża o 7:05 i przyjeżdża o 9:15.",
            "Pociąg odjeżdża o siódmej zero pięć i przyjeżdża o dziewiątej piętnaście.",
        ),
        (
            "Wywóz śmieci jest 02.12.2026.",
            "Wywóz śmieci jest drugiego grudnia dwa tysiące dwudziestego szóstego roku.",
        ),
        (
            "Benzyna kosztuje 6,49 zł za litr, a abonament 1 200 zł rocznie.",
            "Benzyna kosztuje sześć złotych czterdzieści dziewięć groszy za litr, a abonament "
            "tysiąc dwieście złotych rocznie.",
        ),
        (
            "Rachunek wynosi 1 234,56 zł.",
            "Rachunek wynosi tysiąc dwieście trzydzieści cztery złote pięćdziesiąt sześć groszy.",
        ),
        (
            "Wiatr wieje z prędkością 25 km/h, a ciśnienie wynosi 1013 hPa.",
            "Wiatr wieje z prędkością dwadzieścia pięć kilometrów na godzinę, a ciśnienie "
            "wynosi tysiąc trzynaście hektopaskali.",
        ),
        (
            "Zadzwoń pod +48 12 345 67 89 lub napisz na anna@example.com.",
            "Zadzwoń pod plus cztery osiem, jeden dwa, trzy cztery pięć, sześć siedem, osiem "
            "dziewięć lub napisz na anna małpa example kropka com.",
        ),
        (
            "Więcej informacji na example.com.",
            "Więcej informacji na example kropka com.",
        ),
        (
            "Wersja 1.10.2 naprawia błąd czujnika.",
            "Wersja jeden kropka dziesięć kropka dwa naprawia błąd czujnika.",
        ),
        (
            "Zostały 2 godziny i 1 minuta, itd.",
            "Zostały dwie godziny i jedna minuta, i tak dalej.",
        ),
        (
            "Adres: dr Nowak, ul. Długa 5, np. w Krakowie.",
            "Adres: doktor Nowak, ulica Długa pięć, na przykład w Krakowie.",
        ),
        (
            "Paczka waży 2,5 kg.",
            "Paczka waży dwa przecinek pięć kilograma.",
        ),
        (
            "W 1984 r. miasto miało 12 000 mieszkańców.",
            "W tysiąc dziewięćset osiemdziesiątym czwartym roku miasto miało dwanaście tysięcy "
            "mieszkańców.",
        ),
        (
            "Pralka zużyła 1,5 kWh w 10-20 minut.",
            "Pralka zużyła jeden przecinek pięć kilowatogodziny w dziesięć-dwadzieścia minut.",
        ),
    ],
    # A date's day is nominative neuter ("первое декабря"), as when naming the date; after "до",
    # "с", "от", "после" genitive and after "к" dative. As a time adverbial ("встреча первого
    # декабря") and in numbers after prepositions ("до минус трёх градусов") the nominative
    # stays: cardinals are not declined.
    "ru": [
        (
            "В гостиной 21,5 °C и влажность 45 %.",
            "В гостиной двадцать одна целая пять десятых градуса Цельсия и влажность сорок "
            "пять процентов.",
        ),
        (
            "Ночью будет -3 °C.",
            "Ночью будет минус три градуса Цельсия.",
        ),
        (
            "Сегодня 1 декабря 2026 года, встреча в 14:30.",
            "Сегодня первое декабря две тысячи двадцать шестого года, встреча в четырнадцать "
            "часов тридцать минут.",
        ),
        (
            "Поезд отправляется в 7:05 и прибывает в 9:15.",
            "Поезд отправляется в семь часов пять минут и прибывает в девять часов пятнадцать "
            "минут.",
        ),
        (
            "Следующий вывоз мусора: 02.12.2026.",
            "Следующий вывоз мусора: второе декабря две тысячи двадцать шестого года.",
        ),
        (
            "Бензин стоит 55,90 ₽ за литр, а подписка 12 000 ₽ в год.",
            "Бензин стоит пятьдесят пять рублей девяносто копеек за литр, а подписка "
            "двенадцать тысяч рублей в год.",
        ),
        (
            "Счёт составляет 1 234,56 €.",
            "Счёт составляет одна тысяча двести тридцать четыре евро пятьдесят шесть центов.",
        ),
        (
            "Ветер 5 м/с, давление 1013 гПа.",
            "Ветер пять метров в секунду, давление одна тысяча тринадцать гектопаскалей.",
        ),
        (
            "Позвоните по номеру +7 495 123-45-67 или напишите на anna@example.com.",
            "Позвоните по номеру плюс семь, четыре девять пять, один два три, четыре пять, "
            "шесть семь или напишите на anna собака example точка com.",
        ),
        (
            "Подробности на example.com.",
            "Подробности на example точка com.",
        ),
        (
            "Версия 1.10.2 исправляет ошибку 2-го датчика.",
            "Версия один точка десять точка два исправляет ошибку второго датчика.",
        ),
        (
            "Осталось 2 часа и 1 минута, т.е. до 1 декабря.",
            "Осталось два часа и одна минута, то есть до первого декабря.",
        ),
        (
            "Посылка весит 2,5 кг, и т.д.",
            "Посылка весит две целых пять десятых килограмма, и так далее.",
        ),
        (
            "В 2026 г. в городе было 12 000 жителей.",
            "В две тысячи двадцать шестом году в городе было двенадцать тысяч жителей.",
        ),
        (
            "Это случилось в 90-х годах.",
            "Это случилось в девяностых годах.",
        ),
        (
            "Расход составил 1,5 кВт·ч за 10-20 минут.",
            "Расход составил одна целая пять десятых киловатт-часа за десять-двадцать минут.",
        ),
    ],
    # Case suffixes after an apostrophe stay as written ("otuz'da"); a reader joins them.
    "tr": [
        (
            "Salonda sıcaklık 21,5 °C ve nem %45.",
            "Salonda sıcaklık yirmi bir virgül beş santigrat derece ve nem yüzde kırk beş.",
        ),
        (
            "Bu gece sıcaklık -3 °C'ye düşecek.",
            "Bu gece sıcaklık eksi üç santigrat derece'ye düşecek.",
        ),
        (
            "Randevunuz 1 Aralık 2026 saat 14:30'da.",
            "Randevunuz bir Aralık iki bin yirmi altı saat on dört otuz'da.",
        ),
        (
            "Tren 7:05'te kalkıyor ve 9:15'te varıyor.",
            "Tren yedi sıfır beş'te kalkıyor ve dokuz on beş'te varıyor.",
        ),
        (
            "Çöp toplama 02.12.2026 tarihinde.",
            "Çöp toplama iki Aralık iki bin yirmi altı tarihinde.",
        ),
        (
            "Benzinin litresi 42,50 TL, abonelik yılda 12.000 TL.",
            "Benzinin litresi kırk iki lira elli kuruş, abonelik yılda on iki bin lira.",
        ),
        (
            "Fatura 1.234,56 € tutarında.",
            "Fatura bin iki yüz otuz dört Euro elli altı tutarında.",
        ),
        (
            "Rüzgar 25 km/h hızla esiyor, basınç 1013 hPa.",
            "Rüzgar yirmi beş kilometre/saat hızla esiyor, basınç bin on üç hektopaskal.",
        ),
        (
            "+90 212 123 45 67 numarasını arayın veya anna@example.com adresine yazın.",
            "artı dokuz sıfır, iki bir iki, bir iki üç, dört beş, altı yedi numarasını arayın "
            "veya anna et example nokta com adresine yazın.",
        ),
        (
            "Ayrıntılar için example.com adresini ziyaret edin.",
            "Ayrıntılar için example nokta com adresini ziyaret edin.",
        ),
        (
            "Sürüm 1.10.2 hatayı düzeltiyor.",
            "Sürüm bir nokta on nokta iki hatayı düzeltiyor.",
        ),
        (
            "Takımımız 3. sırada bitirdi.",
            "Takımımız üçüncü sırada bitirdi.",
        ),
        (
            "Dr. Yılmaz örn. yarın gelecek.",
            "Doktor Yılmaz örneğin yarın gelecek.",
        ),
        (
            "Paket 2,5 kg geliyor, vb.",
            "Paket iki virgül beş kilogram geliyor, ve benzeri.",
        ),
        (
            "1984 yılında şehrin 12.000 nüfusu vardı.",
            "bin dokuz yüz seksen dört yılında şehrin on iki bin nüfusu vardı.",
        ),
        (
            "Çamaşır makinesi 1,5 kWh harcadı.",
            "Çamaşır makinesi bir virgül beş kilovatsaat harcadı.",
        ),
    ],
    # "2" before a measure word is "两" ("两个"); elsewhere cn2an's "二".
    "zh": [
        (
            "客厅现在21.5°C，湿度45%。",
            "客厅现在二十一点五摄氏度，湿度百分之四十五。",
        ),
        (
            "今晚气温将降至-3°C。",
            "今晚气温将降至负三摄氏度。",
        ),
        (
            "您的预约是2026年12月1日14:30。",
            "您的预约是二零二六年十二月一日十四点三十分。",
        ),
        (
            "火车7:05出发，9:15到达。",
            "火车七点零五分出发，九点十五分到达。",
        ),
        (
            "垃圾收集日是2026-12-02。",
            "垃圾收集日是二零二六年十二月二日。",
        ),
        (
            "汽油每升¥7.85，年费¥1,200。",
            "汽油每升七点八五元，年费一千二百元。",
        ),
        (
            "这件衣服$25，约合€23。",
            "这件衣服二十五美元，约合二十三欧元。",
        ),
        (
            "风速25 km/h，气压1013 hPa。",
            "风速每小时二十五公里，气压一千零一十三百帕斯卡。",
        ),
        (
            "请拨打+86 10 1234 5678或发邮件到anna@example.com。",
            "请拨打加八六, 一零, 一二三四, 五六七八或发邮件到anna 艾特 example 点 com。",
        ),
        (
            "详情请访问example.com。",
            "详情请访问example 点 com。",
        ),
        (
            "版本1.10.2修复了这个问题。",
            "版本一点十点二修复了这个问题。",
        ),
        (
            "还剩2个小时，我有3本书。",
            "还剩两个小时，我有三本书。",
        ),
        (
            "洗衣机用了1.5 kWh电。",
            "洗衣机用了一点五千瓦时电。",
        ),
        (
            "比赛在10月举行，持续10-20分钟。",
            "比赛在十月举行，持续十到二十分钟。",
        ),
        (
            "1984年这座城市有12,000人。",
            "一九八四年这座城市有一万二千人。",
        ),
    ],
    "ja": [
        (
            "リビングは21.5°Cで、湿度は45%です。",
            "リビングは摂氏二十一点五度で、湿度は四十五パーセントです。",
        ),
        (
            "今夜の気温は-3°Cまで下がります。",
            "今夜の気温は摂氏マイナス三度まで下がります。",
        ),
        (
            "ご予約は2026年12月1日14:30です。",
            "ご予約は二千二十六年十二月一日十四時三十分です。",
        ),
        (
            "電車は7:05に出発して9:15に着きます。",
            "電車は七時五分に出発して九時十五分に着きます。",
        ),
        (
            "ゴミの収集日は2026-12-02です。",
            "ゴミの収集日は二千二十六年十二月二日です。",
        ),
        (
            "ガソリンは1リットル175円で、年会費は12,000円です。",
            "ガソリンは一リットル百七十五円で、年会費は一万二千円です。",
        ),
        (
            "このシャツは$25です。",
            "このシャツは二十五ドルです。",
        ),
        (
            "風速は25 km/h、気圧は1013 hPaです。",
            "風速は時速二十五キロメートル、気圧は千十三ヘクトパスカルです。",
        ),
        (
            "03-1234-5678にお電話いただくか、anna@example.comにメールしてください。",
            "零三, 一二三四, 五六七八にお電話いただくか、anna アットマーク example ドット comにメールしてください。",
        ),
        (
            "詳しくはexample.comをご覧ください。",
            "詳しくはexample ドット comをご覧ください。",
        ),
        (
            "バージョン1.10.2でこの問題が修正されました。",
            "バージョン一ドット十ドット二でこの問題が修正されました。",
        ),
        (
            "洗濯機は1.5 kWhを使いました。",
            "洗濯機は一点五キロワット時を使いました。",
        ),
        (
            "1984年にこの町の人口は12,000人でした。",
            "千九百八十四年にこの町の人口は一万二千人でした。",
        ),
        (
            "所要時間は10〜20分です。",
            "所要時間は十から二十分です。",
        ),
        (
            "気温は21.5度です。",
            "気温は二十一点五度です。",
        ),
    ],
    # Before counters (개, 명, 시, 병, ...) numbers are native Korean ("두 개", "세 시").
    "ko": [
        (
            "거실은 21.5°C이고 습도는 45%입니다.",
            "거실은 섭씨 이십일 점 오도이고 습도는 사십오 퍼센트입니다.",
        ),
        (
            "오늘 밤 기온은 -3°C까지 떨어집니다.",
            "오늘 밤 기온은 섭씨 마이너스 삼도까지 떨어집니다.",
        ),
        (
            "예약은 2026년 12월 1일 14:30입니다.",
            "예약은 이천이십육년 십이월 일일 열네 시 삼십 분입니다.",
        ),
        (
            "기차는 7:05에 출발해서 9:15에 도착합니다.",
            "기차는 일곱 시 오 분에 출발해서 아홉 시 십오 분에 도착합니다.",
        ),
        (
            "쓰레기 수거일은 2026-12-02입니다.",
            "쓰레기 수거일은 이천이십육년 십이월 이일입니다.",
        ),
        (
            "휘발유는 리터당 1,650원이고 연회비는 12,000원입니다.",
            "휘발유는 리터당 천육백오십 원이고 연회비는 만 이천 원입니다.",
        ),
        (
            "이 셔츠는 $25입니다.",
            "이 셔츠는 이십오 달러입니다.",
        ),
        (
            "풍속은 25 km/h, 기압은 1013 hPa입니다.",
            "풍속은 시속 이십오킬로미터, 기압은 천십삼헥토파스칼입니다.",
        ),
        (
            "010-1234-5678로 전화하시거나 anna@example.com으로 메일 주세요.",
            "공 일 공, 일 이 삼 사, 오 육 칠 팔로 전화하시거나 anna 골뱅이 example 닷 com으로 메일 주세요.",
        ),
        (
            "자세한 내용은 example.com에서 확인하세요.",
            "자세한 내용은 example 닷 com에서 확인하세요.",
        ),
        (
            "버전 1.10.2에서 문제가 해결되었습니다.",
            "버전 일 닷 십 닷 이에서 문제가 해결되었습니다.",
        ),
        (
            "사과 2개와 우유 3병이 있습니다.",
            "사과 두 개와 우유 세 병이 있습니다.",
        ),
        (
            "오후 3시에 만나요, 6월 10일이에요.",
            "오후 세 시에 만나요, 유월 십일이에요.",
        ),
        (
            "세탁기가 1.5 kWh를 사용했습니다.",
            "세탁기가 일 점 오킬로와트시를 사용했습니다.",
        ),
        (
            "1984년에 이 도시의 인구는 12,000명이었습니다.",
            "천구백팔십사년에 이 도시의 인구는 만 이천명이었습니다.",
        ),
    ],
    "hi": [
        (
            "बैठक कक्ष में तापमान 21.5 °C है और नमी 45% है।",
            "बैठक कक्ष में तापमान इक्कीस दशमलव पाँच डिग्री सेल्सियस है और नमी पैंतालीस प्रतिशत है।",
        ),
        (
            "आज रात तापमान -3 °C तक गिर जाएगा।",
            "आज रात तापमान माइनस तीन डिग्री सेल्सियस तक गिर जाएगा।",
        ),
        (
            "आपकी मुलाकात 1 दिसंबर 2026 को 14:30 बजे है।",
            "आपकी मुलाकात एक दिसंबर दो हज़ार छब्बीस को चौदह बजकर तीस मिनट है।",
        ),
        (
            "ट्रेन 7:05 पर चलती है और 9:15 पर पहुँचती है।",
            "ट्रेन सात बजकर पाँच मिनट पर चलती है और नौ बजकर पंद्रह मिनट पर पहुँचती है।",
        ),
        (
            "कूड़ा उठाने का दिन 02/12/2026 है।",
            "कूड़ा उठाने का दिन दो दिसंबर दो हज़ार छब्बीस है।",
        ),
        (
            "पेट्रोल ₹105.50 प्रति लीटर है और सदस्यता ₹1,200 सालाना है।",
            "पेट्रोल एक सौ पाँच रुपये पचास पैसे प्रति लीटर है और सदस्यता एक हज़ार दो सौ रुपये "
            "सालाना है।",
        ),
        (
            "इस कमीज़ की कीमत $25 है।",
            "इस कमीज़ की कीमत पच्चीस डॉलर है।",
        ),
        (
            "हवा की गति 25 km/h है और दबाव 1013 hPa है।",
            "हवा की गति पच्चीस किलोमीटर प्रति घंटा है और दबाव एक हज़ार तेरह हेक्टोपास्कल है।",
        ),
        (
            "+91 98765 43210 पर कॉल करें या anna@example.com पर लिखें।",
            "प्लस नौ एक, नौ आठ सात छः पाँच, चार तीन दो एक शून्य पर कॉल करें या anna एट example "
            "डॉट com पर लिखें।",
        ),
        (
            "अधिक जानकारी के लिए example.com देखें।",
            "अधिक जानकारी के लिए example डॉट com देखें।",
        ),
        (
            "संस्करण 1.10.2 ने समस्या ठीक कर दी है।",
            "संस्करण एक डॉट दस डॉट दो ने समस्या ठीक कर दी है।",
        ),
        (
            "डॉ. शर्मा कल आएंगे।",
            "डॉक्टर शर्मा कल आएंगे।",
        ),
        (
            "वॉशिंग मशीन ने 1.5 kWh बिजली खर्च की।",
            "वॉशिंग मशीन ने एक दशमलव पाँच किलोवॉट घंटे बिजली खर्च की।",
        ),
        (
            "1984 में शहर की आबादी 1,00,000 थी।",
            "उन्नीस सौ चौरासी में शहर की आबादी एक लाख थी।",
        ),
        (
            "इसमें 10-20 मिनट लगेंगे।",
            "इसमें दस से बीस मिनट लगेंगे।",
        ),
    ],

}
# fmt: on


@pytest.mark.parametrize(
    ("code", "text", "expected"),
    [(code, text, expected) for code, cases in CASES.items() for text, expected in cases],
)
def test_sentences(code: str, text: str, expected: str) -> None:
    """Each sentence comes out as a native speaker reads it."""
    assert verbalize(text, code) == expected


def test_every_language_has_cases() -> None:
    """Every language with a table is tested with at least 15 sentences."""
    assert set(CASES) == set(LANGUAGES)
    assert all(len(cases) >= 15 for cases in CASES.values())


@pytest.mark.parametrize(
    ("code", "text"),
    [(code, text) for code, cases in CASES.items() for text, _ in cases],
)
def test_idempotent(code: str, text: str) -> None:
    """The verbalizer leaves its own output as it is."""
    once = verbalize(text, code)
    assert verbalize(once, code) == once


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("COVID-19 cases", "COVID-nineteen cases"),
        ("10-20", "ten to twenty"),
        ("−5 and -5", "minus five and minus five"),
        ("007", "zero zero seven"),
        (
            "12345678901234567890",
            " ".join("one two three four five six seven eight nine zero".split() * 2),
        ),
        ("mp3, 221B, H2O, 4K", "mp three, two hundred twenty-one B, H two O, four K"),
        ("2x3 = 6", "two times three equals six"),
        ("This is the end. Next one", "This is the end. Next one"),
        ("The end.", "The end."),
        ("Apples, pears etc.", "Apples, pears et cetera."),
        ("I live on Main St.", "I live on Main Street."),
        ("The 21ST century", "The twenty-first century"),
        ("Back in the '80s", "Back in the eighties"),
        ("$0.50 and $1.00", "fifty cents and one dollar"),
        ("1.2.3.4", "one dot two dot three dot four"),
        ("  many   spaces  ", "many spaces"),
    ],
)
def test_english_edges(text: str, expected: str) -> None:
    """Signs, leading zeros, long digit strings, glued letters, sentence ends, abbreviations."""
    assert verbalize(text, "en") == expected


@pytest.mark.parametrize("code", ["de", "de_DE", "de-AT", "DE", "de_CH.UTF-8"])
def test_language_codes(code: str) -> None:
    """A language is found by its code in any usual spelling."""
    assert language(code) is LANGUAGES["de"]
    assert verbalize("Es sind 2,5 Grad.", code) == "Es sind zwei Komma fünf Grad."


def test_unknown_language_with_num2words() -> None:
    """A language without a table gets its numbers from num2words and its units from CLDR."""
    assert verbalize("Er zijn 5 katten en 21 °C.", "nl") == (
        "Er zijn vijf katten en eenentwintig graden Celsius."
    )


def test_unknown_language_without_numbers() -> None:
    """A language neither num2words nor a table knows keeps its digits; spaces are squeezed."""
    assert verbalize("Es  sind 5 € und 21 °C.", "xx") == "Es sind 5 € und 21 °C."


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # num2words' Telugu fails above 10^10: that number keeps its digits
        ("te", "12345678901234 మరియు సున్న బిందువు అయిదు"),
        # num2words' Amharic never returns for 1234567: Amharic keeps all its digits
        ("am", "12345678901234 మరియు 0.5"),
    ],
)
def test_library_failures(code: str, expected: str) -> None:
    """A number the library fails on, or would hang on, is left in digits."""
    assert verbalize("12345678901234 మరియు 0.5", code) == expected


@pytest.mark.parametrize("code", sorted(LANGUAGES))
def test_titles_are_abbreviations(code: str) -> None:
    """The abbreviations that never end a sentence are abbreviations of the table."""
    table = LANGUAGES[code]
    assert table.titles <= set(table.abbreviations) | set(table.before_number)


@pytest.mark.parametrize("code", sorted(LANGUAGES))
def test_linear_time(code: str) -> None:
    """Every adversarial fragment, repeated to 20,000 characters, is said in time linear in its
    length in every language: no pattern backtracks or rescans what it has read."""
    verbalize("1 a.", code)  # the language's patterns and CLDR data, loaded once
    for fragment in ADVERSARIAL_FRAGMENTS:
        assert_linear_time(lambda text: verbalize(text, code), fragment, ADVERSARIAL_CHARS)
